package ejctl

// The commands by concern, each group a view of the one cli (its flags,
// settings, client and output helpers) holding the commands of one area:
//
//   - objectGroup: manifests and objects of every kind (apply, ls, get,
//     rm, disable, enable);
//   - runGroup: jobs' runs (register, trigger and wait, kill, logs, tasks,
//     history, backfills, deadlines);
//   - appGroup: apps and their packages (publish, registry);
//   - tenancyGroup: namespaces, tokens, secrets, calendars, login;
//   - clusterGroup: the replicated store's members, backup and restore.
type (
	objectGroup  struct{ *cli }
	runGroup     struct{ *cli }
	appGroup     struct{ *cli }
	tenancyGroup struct{ *cli }
	clusterGroup struct{ *cli }
)
