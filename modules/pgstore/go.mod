module github.com/adkit/adk/modules/pgstore

go 1.26

require (
	github.com/adkit/adk/modules/contract v0.1.0
	github.com/adkit/adk/modules/policy v0.1.0
)

replace (
	github.com/adkit/adk/modules/contract => ../contract
	github.com/adkit/adk/modules/policy => ../policy
)
