#!/bin/sh
# tests/integration/symbols.sh LIB MAP - librangeprof.so exports exactly the entry points
# its version script names, nothing else, and its SONAME is its file name.
set -eu
got=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ')
want=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$2" | sort | tr '\n' ' ')
[ "$got" = "$want" ] || { echo "exported: '$got', expected: '$want'"; exit 1; }
soname=$(readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ "$soname" = "librangeprof.so" ] || { echo "SONAME '$soname', expected 'librangeprof.so'"; exit 1; }
echo "symbols: $got; SONAME $soname"
