// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Instantiates the tracepoints declared in cm_trace.h.
 */
#define CREATE_TRACE_POINTS
#include "cm_trace.h"
