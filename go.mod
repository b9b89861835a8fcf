module github.com/agentvalues/values

go 1.26.8

require github.com/dustin/go-humanize v1.0.1
