//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// Upgrading from the key layout before declared keys: Open refuses a
// namespace that still holds it, InspectLayout is the dry run and
// MigrateLayout moves it (with every worker stopped). adkctl redis
// migrate-layout does the same from a terminal.
func ExampleRedisWorkQueue_MigrateLayout() {
	ctx := context.Background()
	opt, err := redis.ParseURL(os.Getenv("ADK_TEST_REDIS_URL"))
	if err != nil {
		fmt.Println("set ADK_TEST_REDIS_URL:", err)
		return
	}
	client := redis.NewClient(opt)
	defer client.Close()
	settings := redisstore.Settings{Namespace: "example-layout", Volatile: true}
	defer redistest.Purge(ctx, client, settings.Namespace)

	_, queue, err := redisstore.Open(ctx, client, nil, settings)
	var pe *contract.PreflightError
	if errors.As(err, &pe) && pe.Setting == redisstore.SettingQueueLayout {
		q, _ := redisstore.NewQueue(client, nil, settings) // without Preflight, to migrate
		defer q.Close()
		plan, _ := q.InspectLayout(ctx)
		fmt.Println("to move:", plan.OldKeys(), "keys")
		if _, err := q.MigrateLayout(ctx); err != nil {
			fmt.Println(err)
			return
		}
		_, queue, err = redisstore.Open(ctx, client, nil, settings)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer queue.Close()
	fmt.Println("opened")
	// Output: opened
}
