// Package webhook posts failure notifications for jobs whose
// jobErrorHandlerType is WEBHOOK, to props["webhook.url"] in the format of
// props["webhook.format"]: generic JSON, or the text-message bodies DingTalk
// and WeChat Work robots and Slack incoming webhooks accept. Sending is
// asynchronous through a bounded queue, time-limited and retried; a full
// queue drops the notification with a log line rather than slowing the
// scheduler.
//
// It lives in the history tree (see package history) as the other consumer
// of task results outside the scheduler: it implements observe.Notifier,
// and package scheduler does not import it.
package webhook
