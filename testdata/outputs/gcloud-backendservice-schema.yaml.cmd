cat /usr/lib/google-cloud-sdk/lib/googlecloudsdk/schemas/compute/beta/BackendService.yaml   # package google-cloud-cli
