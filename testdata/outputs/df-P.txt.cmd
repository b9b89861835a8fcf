df -P / /dev /dev/shm /sys/fs/cgroup
