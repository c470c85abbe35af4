// Package secrets keeps a namespace's named secrets sealed: each value is
// encrypted with AES-256-GCM under the operator's key (secrets_key_file),
// with the namespace and the name as additional data, so a sealed value
// moved to another name or namespace does not open. The registry stores
// only Sealed records; nothing in the API, the console, history, the
// audit log or the logs ever holds a value (docs/tenancy.md, "Secrets").
//
// A Keyring holds one or more keys: the first seals, every one opens, so
// a key is rotated by putting the new one first, resealing (POST
// /api/operate/secrets/reseal) and then removing the old one.
//
// A task gets its job's secrets from the scheduler when it starts: the
// task's payload carries a fetch token (TaskToken, an HMAC of the task id
// under a key derived from the keyring), never a value, and the scheduler
// answers it only while that task runs.
package secrets
