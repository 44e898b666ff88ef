#!/usr/bin/env python3
"""Every config key the key table calls "used" is read by the code (ctest used_keys_check).

A key declared with Used(...) and a field (&Struct::field) promises that its value changes
what homodyne-hpc does; docs/configuration.md says "used". The check fails when such a
field's name appears nowhere in src/ outside the key tables and config.h, the declaration
(a key that is stored and never read is "accepted": Acc(...), listed at --validate -v).
A field read only inside src/config (resolved there into another) counts as read.

  check-used-keys.py [SOURCE_DIR]
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
src = os.path.join(root, "src")
tables = sorted(glob.glob(os.path.join(src, "config", "key_table*.cpp")))
readers = [f for f in glob.glob(os.path.join(src, "**", "*.cpp"), recursive=True) +
           glob.glob(os.path.join(src, "**", "*.h"), recursive=True)
           if "key_table" not in os.path.basename(f) and
           os.path.relpath(f, src) != os.path.join("config", "config.h")]
body = "".join(open(f, encoding="utf-8").read() for f in readers)
declared = re.compile(r'\.Used\("([^"]*)"(.*?)\);', re.S)
unread = []
for table in tables:
    for m in declared.finditer(open(table, encoding="utf-8").read()):
        field = re.search(r'&[A-Za-z_:]*::([A-Za-z_0-9]+)\)', m.group(2))
        if field and not re.search(r'\b' + field.group(1) + r'\b', body):
            unread.append(f"{os.path.relpath(table, root)}: {m.group(1)} "
                          f"(field {field.group(1)} is never read)")
if unread:
    print("check-used-keys: keys called used whose value nothing reads:")
    for u in unread:
        print("  " + u)
    sys.exit(1)
print(f"check-used-keys: every used key with a field is read ({len(tables)} tables)")
