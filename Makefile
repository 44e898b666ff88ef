# Convenience wrappers around scripts/ (the README uses the scripts directly).
.PHONY: demo test build deps format clean
demo:
	bash scripts/demo.sh
test:
	bash scripts/test.sh
build:
	bash scripts/build.sh
deps:
	bash scripts/install-deps.sh
format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')
clean:
	rm -rf build build-debug build-asan
