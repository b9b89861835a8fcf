getent passwd
