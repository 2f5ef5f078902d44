module github.com/adkit/adk/modules/policy

go 1.26
