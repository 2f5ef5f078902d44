package pgstore

import (
	"errors"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
)

func TestSchemaErrNamesTheCurrentVersion(t *testing.T) {
	err := schemaErr(&pgconn.PgError{Code: "42P01", Message: `relation "adk_work" does not exist`})
	var se *contract.SchemaError
	if !errors.As(err, &se) || se.Want != "the tables of ExpectedSchema version "+strconv.Itoa(SchemaVersion) {
		t.Errorf("schemaErr: %v", err)
	}
}
