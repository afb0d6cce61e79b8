#!/bin/sh
# Print the first Python interpreter of version $1 (e.g. 3.13) that runs here, looking on PATH and
# in pyenv's versions; print nothing (and exit 1) when there is none.
for candidate in "python$1" "$HOME"/.pyenv/versions/"$1".*/bin/python"$1" /usr/local/bin/python"$1"; do
    if "$candidate" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$1'.split('.')))" \
        >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
exit 1
