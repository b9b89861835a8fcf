cat /usr/lib/google-cloud-sdk/lib/surface/ml/speech/__init__.yaml   # package google-cloud-cli
