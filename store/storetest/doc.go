// Package storetest is the conformance suite for store.KV. Every
// implementation (store/memory, store/sqlite, store/zk) runs it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.KV {
//			kv := open(t) // fresh and empty
//			t.Cleanup(func() { kv.Close() })
//			return kv
//		})
//	}
//
// Each subtest opens its own store. The suite never sleeps: it waits for
// events with a failure deadline (Options.Timeout) only. RunOptions scales
// the counts down for slow servers such as a real ZooKeeper.
//
// Beyond the sentences of the store.KV doc comments, the suite pins down
// these choices (all implementations must agree on them):
//   - the root "/" always exists (Get gives version 0) and is not writable;
//   - implicitly created ancestors are reported to watchers as EventPut;
//   - a recursive delete reports one EventDelete per removed node, every
//     node after all of its descendants;
//   - EventPut carries the node's new version;
//   - Close ends watches that are still open (their channels are closed).
package storetest
