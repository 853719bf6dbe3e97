#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "train_tp.h"
