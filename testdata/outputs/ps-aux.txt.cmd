unshare --pid --fork --mount-proc bash -c 'sleep 300 & tail -f /dev/null & python3 -c "import time; time.sleep(300)" & sh -c "while :; do sleep 60; done" & sleep 1; ps aux; kill $(jobs -p)'
