#!/bin/sh
# tests/integration/symbols.sh LIB MAP - librangeprof.so exports exactly the entry points
# its version script names, nothing else.
set -eu
got=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ')
want=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$2" | sort | tr '\n' ' ')
[ "$got" = "$want" ] || { echo "exported: '$got', expected: '$want'"; exit 1; }
echo "symbols: $got"
