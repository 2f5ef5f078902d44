package pgstore

import (
	"context"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// MaxNotifyPayload is the largest NOTIFY payload PostgreSQL accepts: it
// refuses 8000 bytes and more. Larger data rides a table row, with only
// the row's id in the notification.
const MaxNotifyPayload = 7999

// MaxChannelBytes is the longest channel name (an identifier).
const MaxChannelBytes = 63

// PayloadTooLargeError is a NOTIFY payload over MaxNotifyPayload, refused
// before anything was sent.
type PayloadTooLargeError struct {
	Channel string
	Size    int
	Limit   int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("pgstore: notification payload for channel %q is %d bytes, over the %d-byte limit: store the data in a row and notify its id",
		e.Channel, e.Size, e.Limit)
}

// Is makes errors.Is(err, contract.ErrInvalid) true: the caller sent too
// much, the server is fine.
func (e *PayloadTooLargeError) Is(target error) bool { return target == contract.ErrInvalid }

// Notify sends a notification through exec (with pg_notify, so inside a
// transaction it is delivered on commit). A payload over MaxNotifyPayload
// is a *PayloadTooLargeError before the round trip.
func Notify(ctx context.Context, exec Executor, channel, payload string) error {
	if err := validateChannel(channel); err != nil {
		return err
	}
	if len(payload) > MaxNotifyPayload {
		return &PayloadTooLargeError{Channel: channel, Size: len(payload), Limit: MaxNotifyPayload}
	}
	_, err := exec.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload)
	return err
}

func validateChannel(channel string) error {
	if err := contract.ValidateName("channel", channel); err != nil {
		return err
	}
	if len(channel) > MaxChannelBytes {
		return &contract.ValidationError{Field: "channel", Problem: fmt.Sprintf("is %d bytes; PostgreSQL channel names are at most %d", len(channel), MaxChannelBytes)}
	}
	return nil
}
