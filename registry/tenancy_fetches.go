package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ejcloud/elasticjob/store"
)

// secretFetchesPath records, per shard, the task whose executor fetched
// its secrets, /secret-fetches/{job}/{item} holding the task id: a fetch
// token is good for one fetch, and every scheduler instance sees it used.
// A shard's next task overwrites it (a task id is never reused); deleting
// the job deletes its entries.
const secretFetchesPath = "/secret-fetches"

func secretFetchPath(job string, item int) string {
	return secretFetchesPath + "/" + job + "/" + strconv.Itoa(item)
}

// ConsumeSecretFetch records that taskID (of job's shard item) fetched its
// secrets; false when it did already. Two concurrent fetches of one task
// cannot both succeed: the write is conditional on what was read.
func (tn Tenancy) ConsumeSecretFetch(ctx context.Context, job string, item int, taskID string) (bool, error) {
	p := secretFetchPath(job, item)
	for range 8 {
		n, err := tn.r.phys.Get(ctx, p)
		var op store.Op
		switch {
		case errors.Is(err, store.ErrNotFound):
			op = store.Create(p, []byte(taskID))
		case err != nil:
			return false, err
		case string(n.Value) == taskID:
			return false, nil
		default:
			op = store.Set(p, []byte(taskID), n.Version)
		}
		err = tn.r.phys.Commit(ctx, op)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue // another fetch wrote meanwhile: read again
		}
		return err == nil, err
	}
	return false, fmt.Errorf("record the secret fetch of %s: %w", taskID, store.ErrConflict)
}

// forgetSecretFetches deletes the fetch records of job (a key), behind
// the fence: its job is deleted, and a job registered again under the
// name starts with none.
func (tn Tenancy) forgetSecretFetches(ctx context.Context, job string) error {
	op := store.Delete(secretFetchesPath+"/"+job, store.AnyVersion)
	if tn.r.fence == nil {
		return tn.r.phys.Commit(ctx, op)
	}
	return tn.r.phys.Commit(ctx, append(tn.r.fence(), op)...)
}
