npm view react --json
