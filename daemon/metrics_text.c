/* metrics_text.c — feederd's figures in the Prometheus text exposition
 * format (version 0.0.4), built by the event loop once a tick for
 * metrics.h's listener.
 *
 * Names follow Prometheus conventions: the `feeder_` prefix, `_total` for
 * counters, base units (`_seconds`, `_bytes`), `_ratio` for shares. Labels
 * are bounded: the dataset (a served directory's name), the pipeline, the
 * stage. Per-dataset counters include the streams that have ended
 * (metrics_text_stream_gone keeps their totals), so they never go down. */
#include "metrics_text.h"

#include "pool.h"
#include "registry.h"
#include "session.h"
#include "shard_cache.h"
#include "stream.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const stage_label[FEEDER_STAGES] = {
	"read", "decode", "transform", "features", "gpu",
};

static const char *pipeline_label(uint32_t p)
{
	return p == FEEDER_PIPE_JPEG ? "jpeg" : p == FEEDER_PIPE_FEATURES ? "features" : "other";
}

/* The series of (dataset, pipeline), added if new; NULL without memory. */
static struct metrics_series *series(struct server *srv, const char *dataset, uint32_t pipeline)
{
	for (size_t i = 0; i < srv->nseries; i++)
		if (srv->series[i].pipeline == pipeline && !strcmp(srv->series[i].dataset, dataset))
			return &srv->series[i];
	if (srv->nseries == srv->cap_series) {
		size_t cap = srv->cap_series ? 2 * srv->cap_series : 8;
		struct metrics_series *n = realloc(srv->series, cap * sizeof(*n));
		if (!n)
			return NULL;
		srv->series = n;
		srv->cap_series = cap;
	}
	struct metrics_series *s = &srv->series[srv->nseries++];
	memset(s, 0, sizeof(*s));
	snprintf(s->dataset, sizeof(s->dataset), "%s", dataset);
	s->pipeline = pipeline;
	return s;
}

static void add(struct metrics_series *to, const struct feeder_stream_status *st)
{
	to->samples += st->samples;
	to->batches += st->batches_sent;
	to->replacements += st->replacements;
	to->wait_us += st->trainer_wait_us;
	to->compute_us += st->trainer_compute_us;
	for (int i = 0; i < FEEDER_STAGES; i++)
		to->stage_s[i] += st->stage_s[i];
}

void metrics_text_stream_gone(struct server *srv, struct stream *s, uint64_t now_us)
{
	struct feeder_stream_status st;
	stream_status(s, now_us, &st);
	struct metrics_series *ser = series(srv, st.dataset, st.pipeline);
	if (ser)
		add(ser, &st);
}

/* The remote datasets' shard cache: only in a daemon that has one, so
 * that one without keeps its output. */
static void cache_lines(FILE *f, struct shard_cache *c)
{
	struct shard_cache_stats st;
	shard_cache_stats(c, &st);
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} lines[] = {
		{ "feeder_cache_bytes", "gauge", "Shard files in the cache of remote datasets.",
		  st.bytes },
		{ "feeder_cache_limit_bytes", "gauge", "cache_limit.", st.limit },
		{ "feeder_cache_peak_bytes", "gauge", "The most bytes the shard cache has held.",
		  st.peak_bytes },
		{ "feeder_cache_hits_total", "counter", "Shard reads that found the shard cached.",
		  st.hits },
		{ "feeder_cache_misses_total", "counter",
		  "Shard reads that had to wait for a fetch.", st.misses },
		{ "feeder_cache_fetches_total", "counter", "Shards fetched and checked.",
		  st.fetches },
		{ "feeder_cache_fetched_bytes_total", "counter",
		  "Bytes received from object storage.", st.fetched_bytes },
		{ "feeder_cache_fetch_retries_total", "counter", "Object storage requests retried.",
		  st.retries },
		{ "feeder_cache_fetch_failures_total", "counter",
		  "Shard fetches that failed for good.", st.failures },
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", lines[i].name,
			lines[i].help, lines[i].name, lines[i].type, lines[i].name, lines[i].v);
	fprintf(f,
		"# HELP feeder_cache_fetch_wait_seconds_total Worker time spent waiting for "
		"a shard fetch.\n# TYPE feeder_cache_fetch_wait_seconds_total counter\n"
		"feeder_cache_fetch_wait_seconds_total %.6f\n",
		st.wait_s);
}

int metrics_text(struct server *srv, uint64_t now_us, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);
	if (!f)
		return -1;
	/* live figures on top of the ended streams' totals */
	size_t n = srv->nseries;
	struct metrics_series *live = calloc(n + 1, sizeof(*live));
	double stage[FEEDER_STAGES];
	uint64_t batches = srv->done_batches, samples = srv->done_samples;
	uint64_t repl = srv->done_replacements, errs = srv->done_decode_errors;
	unsigned streams = 0;
	pool_lock(srv->pool);
	server_stage_seconds(srv, stage);
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++) {
			struct feeder_stream_status st;
			stream_status(c->streams[i], now_us, &st);
			stream_totals(c->streams[i], &batches, &samples, &repl, &errs);
			streams++;
			struct metrics_series *ser = series(srv, st.dataset, st.pipeline);
			if (!ser)
				continue;
			if (srv->nseries > n) { /* a new series: room for it in live */
				struct metrics_series *g =
					realloc(live, (srv->nseries + 1) * sizeof(*g));
				if (!g)
					continue;
				live = g;
				memset(&live[n], 0, (srv->nseries - n) * sizeof(*live));
				n = srv->nseries;
			}
			struct metrics_series *l = &live[ser - srv->series];
			add(l, &st);
			l->open++;
		}
	pool_unlock(srv->pool);
	if (!live) {
		fclose(f);
		free(*out);
		return -1;
	}
	fprintf(f, "# HELP feeder_up Whether feederd is serving (always 1 when scraped).\n"
		   "# TYPE feeder_up gauge\nfeeder_up 1\n");
	fprintf(f,
		"# HELP feeder_uptime_seconds Seconds since feederd started.\n"
		"# TYPE feeder_uptime_seconds gauge\nfeeder_uptime_seconds %.3f\n",
		(double)(now_us - srv->start_us) / 1e6);
	fprintf(f,
		"# HELP feeder_clients Connected clients.\n# TYPE feeder_clients gauge\n"
		"feeder_clients %u\n",
		srv->nsessions);
	fprintf(f,
		"# HELP feeder_streams Open streams.\n# TYPE feeder_streams gauge\n"
		"feeder_streams %u\n",
		streams);
	fprintf(f,
		"# HELP feeder_workers Decode worker threads.\n# TYPE feeder_workers gauge\n"
		"feeder_workers %u\n",
		pool_workers(srv->pool));
	fprintf(f,
		"# HELP feeder_workers_busy_ratio Share of the workers' time spent on samples "
		"over the last 10 s.\n# TYPE feeder_workers_busy_ratio gauge\n"
		"feeder_workers_busy_ratio %.4f\n",
		srv->workers_busy < 0 ? NAN : srv->workers_busy);
	fprintf(f,
		"# HELP feeder_ring_memory_bytes Shared memory of all stream rings.\n"
		"# TYPE feeder_ring_memory_bytes gauge\nfeeder_ring_memory_bytes %" PRIu64 "\n",
		srv->mem_used);
	fprintf(f,
		"# HELP feeder_ring_memory_limit_bytes memory_limit.\n"
		"# TYPE feeder_ring_memory_limit_bytes gauge\n"
		"feeder_ring_memory_limit_bytes %" PRIu64 "\n",
		srv->cfg.memory_limit);
	fprintf(f,
		"# HELP feeder_datasets Datasets served.\n# TYPE feeder_datasets gauge\n"
		"feeder_datasets %zu\n",
		registry_count(srv->reg));
	fprintf(f,
		"# HELP feeder_batches_total Batches delivered.\n# TYPE feeder_batches_total "
		"counter\nfeeder_batches_total %" PRIu64 "\n",
		batches);
	fprintf(f,
		"# HELP feeder_samples_total Samples decoded.\n# TYPE feeder_samples_total "
		"counter\nfeeder_samples_total %" PRIu64 "\n",
		samples);
	fprintf(f,
		"# HELP feeder_replacements_total Corrupt samples replaced.\n"
		"# TYPE feeder_replacements_total counter\nfeeder_replacements_total %" PRIu64 "\n",
		repl);
	fprintf(f,
		"# HELP feeder_decode_errors_total Samples that failed to decode.\n"
		"# TYPE feeder_decode_errors_total counter\nfeeder_decode_errors_total %" PRIu64
		"\n",
		errs);
	fprintf(f,
		"# HELP feeder_jpeg_fallbacks_total JPEG samples decoded by libjpeg's Huffman "
		"decoder where feederd's own refused them.\n# TYPE feeder_jpeg_fallbacks_total "
		"counter\nfeeder_jpeg_fallbacks_total %" PRIu64 "\n",
		pool_jpeg_fallbacks(srv->pool));
	fprintf(f,
		"# HELP feeder_protocol_errors_total Malformed messages received.\n"
		"# TYPE feeder_protocol_errors_total counter\nfeeder_protocol_errors_total %" PRIu64
		"\n",
		srv->protocol_errors);
	fprintf(f, "# HELP feeder_worker_seconds_total Worker time per stage.\n"
		   "# TYPE feeder_worker_seconds_total counter\n");
	for (int i = 0; i < FEEDER_STAGES; i++)
		fprintf(f, "feeder_worker_seconds_total{stage=\"%s\"} %.6f\n", stage_label[i],
			stage[i]);
	if (srv->cache)
		cache_lines(f, srv->cache);

	static const struct {
		const char *name, *type, *help;
	} per[] = {
		{ "feeder_dataset_samples_total", "counter",
		  "Samples decoded, per dataset and pipeline." },
		{ "feeder_dataset_batches_total", "counter",
		  "Batches delivered, per dataset and pipeline." },
		{ "feeder_dataset_replacements_total", "counter", "Corrupt samples replaced." },
		{ "feeder_trainer_wait_seconds_total", "counter",
		  "Trainers' time blocked waiting for a batch, as libfeeder reports it." },
		{ "feeder_trainer_compute_seconds_total", "counter",
		  "Trainers' time between batches (their compute), as libfeeder reports it." },
		{ "feeder_dataset_streams", "gauge", "Open streams." },
	};
	for (size_t k = 0; k < sizeof per / sizeof per[0]; k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", per[k].name, per[k].help, per[k].name,
			per[k].type);
		for (size_t i = 0; i < srv->nseries && i < n; i++) {
			const struct metrics_series *d = &srv->series[i], *l = &live[i];
			fprintf(f, "%s{dataset=\"%s\",pipeline=\"%s\"} ", per[k].name, d->dataset,
				pipeline_label(d->pipeline));
			switch (k) {
			case 0:
				fprintf(f, "%" PRIu64 "\n", d->samples + l->samples);
				break;
			case 1:
				fprintf(f, "%" PRIu64 "\n", d->batches + l->batches);
				break;
			case 2:
				fprintf(f, "%" PRIu64 "\n", d->replacements + l->replacements);
				break;
			case 3:
				fprintf(f, "%.6f\n", (double)(d->wait_us + l->wait_us) / 1e6);
				break;
			case 4:
				fprintf(f, "%.6f\n", (double)(d->compute_us + l->compute_us) / 1e6);
				break;
			default:
				fprintf(f, "%u\n", l->open);
				break;
			}
		}
	}
	free(live);
	if (fclose(f) != 0) {
		free(*out);
		return -1;
	}
	return 0;
}
