#!/usr/bin/env bash
# Counts, per CUDA kernel of a binary, the FP32 fused multiply-adds (FFMA: 1/32 rate on the CMP 170HX),
# plain FMUL/FADD, integer dot products (IDP.4A) and I2F conversions in its sm_80 machine code, so that
# docs/cuda.md can say which kernels a CMP card would slow down. Needs cuobjdump (the GPU machine has it).
# Usage: scripts/sass-ffma.sh BINARY [NAME-PATTERN]   (prints: kernel FFMA FMUL FADD IDP4A I2F)
set -eu
bin=$1
pat=${2:-k_}
cuobjdump -sass -arch sm_80 "$bin" | awk -v pat="$pat" '
  /Function :/ { if (name != "" && name ~ pat) print name, ffma, fmul, fadd, idp, i2f; name = $3; ffma = fmul = fadd = idp = i2f = 0; next }
  /FFMA/ { ffma++ } /FMUL/ { fmul++ } /FADD/ { fadd++ } /IDP\.4A/ { idp++ } /I2F/ { i2f++ }
  END { if (name != "" && name ~ pat) print name, ffma, fmul, fadd, idp, i2f }' |
  sort | awk '{ printf "%-90s FFMA %4d FMUL %4d FADD %4d IDP4A %4d I2F %3d\n", substr($1, 1, 90), $2, $3, $4, $5, $6 }'
