npm view express --json
