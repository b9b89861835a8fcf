cat /usr/local/go/src/simd/archsimd/_gen/simdgen/ops/Converts/go.yaml   # shipped with Go 1.26.8
