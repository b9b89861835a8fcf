pip list -v
