/* status_query.c — the daemon's own figures for libfeeder's callers
 * (feeder_get_status, feeder_get_datasets, feeder_get_streams): one STATUS
 * request and its answer, the STATUS_REPLY or a list of DATASET_INFO /
 * STREAM_INFO entries closed by LIST_END. feederctl is built on these.
 *
 * Batches and stream ends that arrive while the answer is awaited go to
 * their streams through conn_dispatch, exactly as during feeder_stream_next,
 * so a trainer may ask for status between batches. */
#include "connection.h"

#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Send STATUS(what); then hand each message of the answer to take(), which
 * returns 1 when the answer is complete, 0 for more, or a negative code. */
static int ask(struct feeder *f, uint32_t what, int timeout_ms,
	       int (*take)(struct feeder *, const struct proto_msg *, void *), void *ctx)
{
	int64_t deadline = conn_deadline(timeout_ms);
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = what;
	int rc = conn_send(f, &m);
	if (rc && conn_revive(f, rc) == 0)
		rc = conn_send(f, &m);
	while (rc == 0) {
		rc = conn_recv(f, deadline, &m, NULL);
		if (rc)
			break;
		switch (m.type) {
		case PROTO_STATUS_REPLY:
		case PROTO_DATASET_INFO:
		case PROTO_STREAM_INFO:
		case PROTO_LIST_END:
			rc = take(f, &m, ctx);
			if (rc == 1)
				return 0;
			break;
		case PROTO_ERROR:
			/* A refusal of the request itself (not of a stream). */
			if (!m.u.error.fatal && m.u.error.stream == 0 && m.u.error.tag == 0)
				return status_fail(f->err, sizeof f->err, m.u.error.code,
						   "feederd: %s", m.u.error.message);
			rc = conn_dispatch(f, &m);
			break;
		default:
			rc = conn_dispatch(f, &m);
		}
	}
	return rc;
}

static int take_summary(struct feeder *f, const struct proto_msg *m, void *ctx)
{
	if (m->type != PROTO_STATUS_REPLY)
		return conn_set_dead(f, FEEDER_EPROTO, "feederd answered STATUS with %s",
				     proto_type_name(m->type));
	*(struct feeder_status *)ctx = m->u.status_reply;
	return 1;
}

int feeder_get_status(struct feeder *f, int timeout_ms, struct feeder_status *out)
{
	memset(out, 0, sizeof *out);
	return ask(f, PROTO_STATUS_SUMMARY, timeout_ms, take_summary, out);
}

/* A growing array of list entries. */
struct list {
	uint16_t type; /* PROTO_DATASET_INFO or PROTO_STREAM_INFO */
	size_t size;   /* bytes of an entry */
	void *items;
	size_t n, cap;
};

static int take_entry(struct feeder *f, const struct proto_msg *m, void *ctx)
{
	struct list *l = ctx;
	if (m->type == PROTO_LIST_END) {
		if (m->u.list_end.count != l->n)
			return conn_set_dead(f, FEEDER_EPROTO,
					     "feederd ended a list of %zu entries as one of %u",
					     l->n, m->u.list_end.count);
		return 1;
	}
	if (m->type != l->type)
		return conn_set_dead(f, FEEDER_EPROTO, "feederd sent %s in a list of %s",
				     proto_type_name(m->type), proto_type_name(l->type));
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		void *items = realloc(l->items, cap * l->size);
		if (!items)
			return status_fail(f->err, sizeof f->err, -ENOMEM, "out of memory");
		l->items = items;
		l->cap = cap;
	}
	const void *src = l->type == PROTO_DATASET_INFO ? (const void *)&m->u.dataset
							: (const void *)&m->u.stream;
	memcpy((char *)l->items + l->n * l->size, src, l->size);
	l->n++;
	return 0;
}

static int get_list(struct feeder *f, uint32_t what, uint16_t type, size_t size, int timeout_ms,
		    void **out, size_t *n)
{
	struct list l = { .type = type, .size = size };
	*out = NULL;
	*n = 0;
	int rc = ask(f, what, timeout_ms, take_entry, &l);
	if (rc) {
		free(l.items);
		return rc;
	}
	*out = l.items;
	*n = l.n;
	return 0;
}

int feeder_get_datasets(struct feeder *f, int timeout_ms, struct feeder_dataset_status **out,
			size_t *n)
{
	return get_list(f, PROTO_STATUS_DATASETS, PROTO_DATASET_INFO, sizeof **out, timeout_ms,
			(void **)out, n);
}

int feeder_get_streams(struct feeder *f, int timeout_ms, struct feeder_stream_status **out,
		       size_t *n)
{
	return get_list(f, PROTO_STATUS_STREAMS, PROTO_STREAM_INFO, sizeof **out, timeout_ms,
			(void **)out, n);
}
