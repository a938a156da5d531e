// SPDX-License-Identifier: GPL-2.0
/*
 * The table walker and validator, compiled into the module from the one
 * source userspace builds too (lib/unwind/unwind_walk.c, found through
 * NMIPROF_LIB: see Kbuild).  It takes kernel types, calls no library
 * and allocates nothing; memory is read through the caller's callbacks.
 */
#include <unwind/unwind_walk.c>
