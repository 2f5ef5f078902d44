module github.com/adkit/adk/modules/dashboard

go 1.26

require (
	github.com/adkit/adk/modules/adkotel v0.1.0
	github.com/adkit/adk/modules/contract v0.1.0
	github.com/adkit/adk/modules/pgstore v0.1.0
	github.com/adkit/adk/modules/policy v0.1.0
	github.com/adkit/adk/modules/redisstore v0.1.0
)

replace (
	github.com/adkit/adk/modules/adkotel => ../adkotel
	github.com/adkit/adk/modules/contract => ../contract
	github.com/adkit/adk/modules/pgstore => ../pgstore
	github.com/adkit/adk/modules/policy => ../policy
	github.com/adkit/adk/modules/redisstore => ../redisstore
)
