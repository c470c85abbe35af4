// Package jobs holds the job domain: job configs and their validation, task
// ids, sharding contexts and the task payload handed to the executor. The
// Quartz cron implementation lives in jobs/cron.
package jobs
