d=$(mktemp -d) && GOCACHE=$d go build -x encoding/json 2>&1; rm -rf "$d"
