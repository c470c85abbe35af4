package scheduler

import "github.com/ejcloud/elasticjob/store"

func deleteOp(path string) store.Op { return store.Delete(path, store.AnyVersion) }
