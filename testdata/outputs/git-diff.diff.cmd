git diff 944a2c0~1 944a2c0
