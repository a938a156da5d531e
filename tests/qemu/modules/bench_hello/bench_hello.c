// SPDX-License-Identifier: GPL-2.0
/*
 * bench_hello: the QEMU bench's own test module. It does nothing but say
 * hello and goodbye, so that the bench's self test can prove the module
 * build, insmod/rmmod and log checks work without depending on nmiprof.ko.
 */
#include <linux/module.h>
#include <linux/printk.h>

static int __init bench_hello_init(void)
{
	pr_info("bench_hello: loaded\n");
	return 0;
}

static void __exit bench_hello_exit(void)
{
	pr_info("bench_hello: unloaded\n");
}

module_init(bench_hello_init);
module_exit(bench_hello_exit);
MODULE_DESCRIPTION("nmiprof QEMU bench self-test module");
MODULE_LICENSE("GPL");
