module github.com/adkit/adk/modules/redisstore

go 1.26.0

require (
	github.com/adkit/adk/modules/contract v0.1.0
	github.com/adkit/adk/modules/policy v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace (
	github.com/adkit/adk/modules/contract => ../contract
	github.com/adkit/adk/modules/policy => ../policy
)
