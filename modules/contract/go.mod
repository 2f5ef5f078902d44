module github.com/adkit/adk/modules/contract

go 1.26

require github.com/adkit/adk/modules/policy v0.1.0

require go.uber.org/goleak v1.3.0

replace github.com/adkit/adk/modules/policy => ../policy
