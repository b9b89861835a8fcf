ls -l --time-style=long-iso /etc
