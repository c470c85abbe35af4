// Package detector finds the leading Mesos master in ZooKeeper, as Mesos' own
// ZooKeeperMasterDetector does, for a mesos_url of the form
// zk://[user:password@]host1:2181,host2:2181/mesos.
//
// # What Mesos writes
//
// Every master joins a ZooKeeper group under the URL's path: it creates an ephemeral sequential
// znode named "json.info_NNNNNNNNNN" (label "json.info", an underscore, a ten-digit sequence)
// holding its MasterInfo as JSON. The member with the lowest sequence leads; when its session
// ends its znode vanishes and the next one leads. Older masters wrote "info_NNNNNNNNNN" (a binary
// MasterInfo protobuf) or an unlabelled "NNNNNNNNNN" (the master's libprocess pid,
// "master@host:port"); both are understood too. Other children (the replicated log's
// "log_replicas") are not sequence nodes and are skipped, as Mesos skips them.
//
// The leader's HTTP address is built as Mesos builds the Location of its redirects:
// http://{hostname}:{port}, or the IP when the master has no hostname (MasterInfo.ip is an IPv4
// address in network byte order packed into a uint32, so 127.0.0.1 reads 16777343).
//
// # Watching
//
// A Detector keeps one ZooKeeper session and a children watch on the path (an exists watch while
// the path does not exist). Leader returns the current leader's URL and a channel that is closed
// as soon as leadership moves (a different member leads, or none does), so the Mesos client drops
// its subscription and subscribes to the new leader. While the ZooKeeper connection is down the
// last known leader is kept: the master may well still lead, and the client's heartbeat watchdog
// notices a dead one.
//
// The user:password of the URL is the ZooKeeper "digest" scheme, as in Mesos' zookeeper::URL;
// URL.String never shows the password.
package detector
