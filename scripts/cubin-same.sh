#!/usr/bin/env bash
# Whether a change to a kernel file leaves its machine code unchanged: compiles FILE.cu from the working tree
# and from REF (default HEAD) to cubins for sm_80 and sm_90 (nvcc -cubin, no GPU needed) and compares every
# kernel's .text section byte for byte. A refactor of device code that passes here runs the same
# instructions as the version a device call proved, so it needs no device call of its own. Only FILE is taken
# from REF: both compile against the working tree's headers, so a change to a header needs the .cu files that
# include it compared against a REF where the header is the same (or a device call). Host code is not compared.
#   scripts/cubin-same.sh src/backends/cuda/kernels/gemv_lean.cu [REF]
set -eu
file=$1 ref=${2:-HEAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git show "$ref:$file" > "$tmp/ref.cu"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for a in 80 90; do
  # REF's file is compiled beside FILE's folder (-I) so that its quoted includes resolve as FILE's do
  "$nvcc" -I src -I include -O3 -std=c++17 -arch=sm_$a -cubin "$file" -o "$tmp/new_$a.cubin"
  "$nvcc" -I src -I include -I "$(dirname "$file")" -O3 -std=c++17 -arch=sm_$a -cubin -x cu "$tmp/ref.cu" -o "$tmp/ref_$a.cubin"
done
python3 - "$tmp" <<'PY'
import struct, sys
def kernels(f):  # an ELF64 cubin's .text.<kernel> sections
    d = open(f, 'rb').read()
    shoff = struct.unpack_from('<Q', d, 0x28)[0]
    size, n, stri = struct.unpack_from('<HHH', d, 0x3A)
    hdr = lambda i: struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * size)
    st = hdr(stri)
    names = d[st[4]:st[4] + st[5]]
    out = {}
    for i in range(n):
        h = hdr(i)
        name = names[h[0]:names.index(b'\0', h[0])].decode()
        if name.startswith('.text.'):
            out[name[6:]] = d[h[4]:h[4] + h[5]]
    return out
bad = 0
for a in ('80', '90'):
    new, ref = kernels(f'{sys.argv[1]}/new_{a}.cubin'), kernels(f'{sys.argv[1]}/ref_{a}.cubin')
    diff = sorted(k for k in set(new) | set(ref) if new.get(k) != ref.get(k))
    print(f'sm_{a}: {len(new)} kernels, {len(diff)} differ' + ''.join(f'\n  {k}' for k in diff[:10]))
    bad |= bool(diff)
sys.exit(1 if bad else 0)
PY
