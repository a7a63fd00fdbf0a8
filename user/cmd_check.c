// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice check: validate a policy file without touching the kernel, and
 * print each limit with its burst math, so what a policy admits can be read
 * before it is enforced.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "compile.h"
#include "policy.h"

#define NSEC_PER_SEC 1e9
#define SEC_PER_MIN 60.0
#define SEC_PER_HOUR 3600.0
#define SEC_PER_DAY 86400.0

static const char usage_text[] = "usage: sluice check <file>\n\n"
				 "  -h, --help   show this help\n";

static const char *proto_text(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	default: return "any protocol";
	}
}

static void print_duration(double s)
{
	if (s < 1)
		printf("%.3gms", s * 1e3);
	else if (s < 2 * SEC_PER_MIN)
		printf("%.3gs", s);
	else if (s < 2 * SEC_PER_HOUR)
		printf("%.3gmin", s / SEC_PER_MIN);
	else if (s < 2 * SEC_PER_DAY)
		printf("%.3gh", s / SEC_PER_HOUR);
	else
		printf("%.3g days", s / SEC_PER_DAY);
}

static void print_policy(const struct policy *p, const struct sluice_policy *sp)
{
	const char *unit = p->rate.cost == SLUICE_COST_BYTES ? "bytes" : "packets";
	double per_s = (double)p->rate.amount * NSEC_PER_SEC / (double)p->rate.period_ns;

	printf("%s (id %u): %s", p->name, sp->id, proto_text(p->match.proto));
	if (p->match.has_port && p->match.port_lo == p->match.port_hi)
		printf(" port %u", p->match.port_lo);
	else if (p->match.has_port)
		printf(" ports %u-%u", p->match.port_lo, p->match.port_hi);
	if (p->match.tcp_syn)
		printf(" SYN");
	if (p->keyed)
		printf(", one key per source prefix: /%u (IPv4), /%u (IPv6)\n", p->ipv4_prefix,
		       p->ipv6_prefix);
	else
		printf(", one key for all sources\n");
	if (p->rate.cost == SLUICE_COST_PKTS) {
		printf("  rate %llu packets per ", (unsigned long long)p->rate.amount);
		print_duration((double)p->rate.period_ns / NSEC_PER_SEC);
	} else {
		printf("  rate %.6g bytes/s", per_s);
	}
	printf(", burst %llu %s\n", (unsigned long long)p->burst, unit);
	printf("  admits at most %llu + %.6g·t %s over any t seconds; an empty bucket refills in ",
	       (unsigned long long)p->burst, per_s, unit);
	print_duration((double)p->burst / per_s);
	printf("\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct diag_list diags = { 0 };
	struct policy_set *ps;
	struct compiled c;
	size_t i;
	int ch, err;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		return ch == 'h' ? cmd_usage(stdout, usage_text, EXIT_OK)
				 : cmd_usage(stderr, usage_text, EXIT_USAGE);
	if (optind != argc - 1)
		return cmd_usage(stderr, usage_text, EXIT_USAGE);
	diags.file = argv[optind];
	ps = policy_set__load(argv[optind], &diags);
	err = ps ? compile_policies(ps, 0, NULL, &c, &diags) : -1;
	if (err) {
		if (diags.n)
			diag__print(&diags, stderr);
		else
			fprintf(stderr, "sluice: cannot read policy '%s': %s\n", argv[optind],
				strerror(errno));
		diag__free(&diags);
		policy_set__free(ps);
		return EXIT_FAIL;
	}
	for (i = 0; i < ps->n_policies; i++)
		print_policy(&ps->policies[i], &c.policies[i]);
	printf("%zu policies, %zu classifier entries: ok\n", ps->n_policies, c.n_match);
	compiled__free(&c);
	policy_set__free(ps);
	return EXIT_OK;
}
