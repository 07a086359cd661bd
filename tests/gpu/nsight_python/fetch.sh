#!/usr/bin/env bash
# tests/gpu/nsight_python/fetch.sh [SOURCE] - run HERE (where GitHub or a mirror of Nsight
# Python's repository is reachable), not on the GPU machine: copies the files that pins.txt
# names, at its commit, into tests/gpu/nsight_python/upstream/ (ignored by git; carried to
# the GPU machine with the working tree's other ignored paths), and checks each against
# its sha256 in pins.txt. SOURCE: a git directory holding that commit (a clone or a bare
# mirror), else https://github.com/NVIDIA/nsight-python.git is cloned (blobs on demand).
# Exit 0 when every file is there with its pinned hash, 1 otherwise (a wrong hash leaves
# no upstream/ behind), 2 on bad arguments.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# The tests point these elsewhere (python/tests/test_nsight_deliberate.py).
pins=${NSIGHT_PYTHON_PINS:-$here/pins.txt}
dest=${NSIGHT_PYTHON_UPSTREAM:-$here/upstream}
url=https://github.com/NVIDIA/nsight-python.git
[ $# -le 1 ] || { echo "usage: $0 [GIT_DIR]" >&2; exit 2; }
commit=$(awk '$1 == "commit" { print $2 }' "$pins")
[ -n "$commit" ] || { echo "fetch.sh: no 'commit' line in $pins" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 1 ]; then
	[ -d "$1" ] || { echo "fetch.sh: '$1' is not a directory (a git clone or mirror)" >&2; exit 2; }
	src=$1
else
	src=$tmp/repo.git
	git clone -q --bare --filter=blob:none "$url" "$src"
fi
git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null ||
	{ echo "fetch.sh: $src does not hold commit $commit" >&2; exit 1; }

staged=$tmp/upstream
bad=0
while read -r sum path; do
	case $sum in '#'* | '' | commit) continue ;; esac
	mkdir -p "$staged/$(dirname "$path")"
	if ! git -C "$src" show "$commit:$path" >"$staged/$path" 2>/dev/null; then
		echo "fetch.sh: $path is not in commit $commit" >&2
		bad=1
		continue
	fi
	got=$(sha256sum "$staged/$path" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "fetch.sh: $path: sha256 $got, pinned $sum" >&2
		bad=1
	fi
done <"$pins"
[ $bad -eq 0 ] || { echo "fetch.sh: nothing copied" >&2; exit 1; }
echo "$commit" >"$staged/COMMIT"
rm -rf "$dest"
mv "$staged" "$dest"
echo "fetch.sh: $(grep -c '^[0-9a-f]\{64\}  ' "$pins") files of NVIDIA/nsight-python@${commit:0:7}" \
	"in $dest ($(du -sh "$dest" | cut -f1))"
