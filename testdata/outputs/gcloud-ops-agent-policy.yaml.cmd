cat /usr/lib/google-cloud-sdk/lib/googlecloudsdk/api_lib/compute/instances/ops_agents/converters/policy_uninstall.yaml   # package google-cloud-cli
