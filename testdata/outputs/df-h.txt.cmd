df -h / /dev /dev/shm /sys/fs/cgroup
