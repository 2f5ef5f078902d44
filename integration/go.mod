module github.com/adkit/adk/integration

go 1.26

require (
	github.com/adkit/adk/modules/contract v0.1.0
	github.com/adkit/adk/modules/pgstore v0.1.0
	github.com/adkit/adk/modules/policy v0.1.0
	github.com/adkit/adk/modules/redisstore v0.1.0
)

replace (
	github.com/adkit/adk/modules/contract => ../modules/contract
	github.com/adkit/adk/modules/pgstore => ../modules/pgstore
	github.com/adkit/adk/modules/policy => ../modules/policy
	github.com/adkit/adk/modules/redisstore => ../modules/redisstore
)
