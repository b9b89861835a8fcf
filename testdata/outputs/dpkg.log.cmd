cat /var/log/dpkg.log
