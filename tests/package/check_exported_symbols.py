#!/usr/bin/env python3
"""libhomodyne.so exports the public API and nothing else.

The allow-list is read from the public headers: every declaration marked HOMODYNE_API (a
function, a member function, or a whole class with its typeinfo and vtable). Every
symbol that `nm -D --defined-only` lists must be one of them, with only public types of
namespace homodyne in its signature; and every marked declaration must be exported.

Usage: check_exported_symbols.py LIBRARY PUBLIC_HEADER_DIR
"""
import collections
import pathlib
import re
import subprocess
import sys

# Symbols that the toolchain puts in every shared object.
TOOLCHAIN = {"_init", "_fini", "_edata", "_end", "__bss_start"}
SPECIAL = re.compile(r"^(typeinfo name for|typeinfo for|vtable for|VTT for) ")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def read_api(header_dir):
    """(functions, classes, types): qualified names of marked functions (with the number of
    overloads declared) and classes, and every type name the headers define."""
    functions, classes, types = collections.Counter(), set(), set()
    for header in sorted(pathlib.Path(header_dir).glob("*.h")):
        text = strip_comments(header.read_text())
        text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)  # the macro's own definition
        # Defined types only (a forward declaration such as Session::Impl is not public).
        for m in re.finditer(r"\b(?:struct|class|enum\s+class|enum)\s+(?:HOMODYNE_API\s+)?(\w+)"
                             r"\s*(?::[^{;]*)?\{", text):
            types.add(m.group(1))
        # Walk the braces, keeping the stack of enclosing namespaces and classes.
        stack, pending, i = [], None, 0
        for tok in re.finditer(r"\{|\}|;|\bnamespace\s+[\w:]+|\b(?:struct|class)\s+"
                               r"(?:HOMODYNE_API\s+)?\w+|\bHOMODYNE_API\b[^;{]*?(~?\w+)\s*\(",
                               text):
            s = tok.group(0)
            if s == "{":
                stack.append(pending)
                pending = None
            elif s == "}":
                stack.pop()
            elif s == ";":
                pending = None
            elif s.startswith("namespace"):
                pending = ("ns", s.split()[1])
            elif s.startswith(("struct", "class")):
                words = s.split()
                pending = ("class", words[-1])
                if "HOMODYNE_API" in words:
                    classes.add("::".join([p[1] for p in stack if p] + [words[-1]]))
            else:
                scope = [p[1] for p in stack if p]
                functions["::".join(scope + [tok.group(1)])] += 1
    return functions, classes, types


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", library], check=True,
                         capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3:
            names.append(parts[2])
    return names


def base_name(symbol):
    """The qualified name without a special prefix, parameters or qualifiers."""
    name = re.sub(r"\[abi:\w+\]", "", SPECIAL.sub("", symbol))
    depth, end = 0, len(name)
    for k, c in enumerate(name):  # the first '(' outside template arguments
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            end = k
            break
    return name[:end].strip()


def check(library, header_dir):
    functions, classes, types = read_api(header_dir)
    if not functions or not classes:
        return [f"no HOMODYNE_API declarations found in {header_dir}"]
    problems, seen = [], collections.Counter()
    # A constructor or destructor is listed once per ABI variant (complete, base) under the
    # same demangled name: each distinct signature counts once.
    for symbol in sorted(set(exported(library))):
        if symbol in TOOLCHAIN:
            continue
        name = base_name(symbol)
        owner = name.rsplit("::", 1)[0]
        allowed = (name in functions or name in classes or owner in classes) and \
            not (SPECIAL.match(symbol) and name not in classes)
        # Every homodyne type in the signature must be a public one (homodyne::X, X declared
        # in the headers), not homodyne::nlsq::… or another internal type.
        signature = re.sub(r"\[abi:\w+\]", "", SPECIAL.sub("", symbol))[len(name):]
        for ref in re.findall(r"homodyne::(\w+)", signature):
            if ref not in types:
                allowed = False
        if allowed:
            seen[name if name in functions or name in classes else owner] += 1
        else:
            problems.append(f"exported but not in the public API: {symbol}")
    # Every overload (ToString of each public enum) and no other: an exported overload
    # that the headers do not declare, of public types only, is caught by the count.
    for name in sorted(functions):
        if seen[name] < functions[name]:
            problems.append(f"marked HOMODYNE_API but not exported: {name} ({seen[name]} of "
                            f"{functions[name]} declaration(s))")
        elif seen[name] > functions[name]:
            problems.append(f"exported but not in the public API: {seen[name]} overloads of "
                            f"{name}, the headers declare {functions[name]}")
    for name in sorted(classes):
        if not seen[name]:
            problems.append(f"marked HOMODYNE_API but not exported: {name}")
    return problems


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    library, header_dir = sys.argv[1:]
    problems = check(library, header_dir)
    n = len(exported(library))
    for p in problems[:60]:
        print(p)
    if len(problems) > 60:
        print(f"... and {len(problems) - 60} more")
    if problems:
        print(f"{library}: {n} exported symbols, {len(problems)} problem(s)")
        return 1
    print(f"{library}: {n} exported symbols, all of them the public API's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
