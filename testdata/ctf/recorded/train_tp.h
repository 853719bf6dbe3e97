/* LTTng-UST tracepoint provider of train.c: the events Zins & Dagenais add to TensorFlow
 * (one Session.run: session_start/session_end; an operation: operation_start/operation_end
 * with its name). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER stepcast_train

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./train_tp.h"

#if !defined(TRAIN_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TRAIN_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(stepcast_train, session_start,
    LTTNG_UST_TP_ARGS(int, step),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, step, step)))
LTTNG_UST_TRACEPOINT_EVENT(stepcast_train, session_end,
    LTTNG_UST_TP_ARGS(int, step),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, step, step)))
LTTNG_UST_TRACEPOINT_EVENT(stepcast_train, operation_start,
    LTTNG_UST_TP_ARGS(const char *, name),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_string(name, name)))
LTTNG_UST_TRACEPOINT_EVENT(stepcast_train, operation_end,
    LTTNG_UST_TP_ARGS(const char *, name),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_string(name, name)))

#endif

#include <lttng/tracepoint-event.h>
