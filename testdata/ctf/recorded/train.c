/* A tiny CPU training loop (linear regression by minibatch SGD), instrumented with the
 * LTTng-UST tracepoints of train_tp.h. A loader thread makes each batch (its work is
 * computing the targets); the training thread waits for it on a condition variable, so it
 * blocks until the loader wakes it. A third thread spins on the same CPU (the recording
 * pins the process to one CPU) so the scheduler preempts the training thread now and then.
 * Build: cc -O2 -o train train.c train_tp.c -llttng-ust -ldl -lpthread -lm
 */
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "train_tp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 256
#define BATCH 256
#define STEPS 12

static float batch_x[BATCH][DIM], batch_y[BATCH];
static int batch_ready = 0, batch_taken = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static atomic_int done = 0;

static float true_w[DIM];

static void *loader(void *arg) {
    (void)arg;
    unsigned seed = 7;
    static float x[BATCH][DIM], y[BATCH];
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < BATCH; i++) {
            float acc = 0;
            for (int j = 0; j < DIM; j++) {
                x[i][j] = (float)rand_r(&seed) / RAND_MAX - 0.5f;
                acc += x[i][j] * true_w[j];
            }
            /* Extra work per sample: a slow "decoder". */
            for (int k = 0; k < 40000; k++)
                acc = acc * 0.999999f + 1e-9f * k;
            y[i] = acc;
        }
        pthread_mutex_lock(&lock);
        while (!batch_taken)
            pthread_cond_wait(&cond, &lock);
        memcpy(batch_x, x, sizeof x);
        memcpy(batch_y, y, sizeof y);
        batch_ready = 1;
        batch_taken = 0;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *spinner(void *arg) {
    (void)arg;
    volatile double sink = 0;
    while (!atomic_load(&done))
        for (int i = 0; i < 100000; i++)
            sink += i * 1e-9;
    return NULL;
}

int main(void) {
    static float w[DIM], grad[DIM], pred[BATCH];
    float lr = 0.01f;
    for (int j = 0; j < DIM; j++)
        true_w[j] = (float)(j % 7) / 7.0f;
    pthread_t load, spin;
    pthread_create(&load, NULL, loader, NULL);
    pthread_create(&spin, NULL, spinner, NULL);
    for (int step = 0; step < STEPS; step++) {
        lttng_ust_tracepoint(stepcast_train, session_start, step);
        /* Waiting for the batch is outside every operation: a gap on this thread. */
        pthread_mutex_lock(&lock);
        while (!batch_ready)
            pthread_cond_wait(&cond, &lock);
        lttng_ust_tracepoint(stepcast_train, operation_start, "copy_batch");
        static float x[BATCH][DIM], y[BATCH];
        memcpy(x, batch_x, sizeof x);
        memcpy(y, batch_y, sizeof y);
        batch_ready = 0;
        batch_taken = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        lttng_ust_tracepoint(stepcast_train, operation_end, "copy_batch");

        lttng_ust_tracepoint(stepcast_train, operation_start, "forward");
        float loss = 0;
        for (int i = 0; i < BATCH; i++) {
            float p = 0;
            for (int j = 0; j < DIM; j++)
                p += w[j] * x[i][j];
            pred[i] = p;
            loss += (p - y[i]) * (p - y[i]);
        }
        lttng_ust_tracepoint(stepcast_train, operation_end, "forward");

        lttng_ust_tracepoint(stepcast_train, operation_start, "backward");
        memset(grad, 0, sizeof grad);
        for (int rep = 0; rep < 600; rep++)
            for (int i = 0; i < BATCH; i++)
                for (int j = 0; j < DIM; j++)
                    grad[j] += (rep == 0) * 2.0f * (pred[i] - y[i]) * x[i][j] / BATCH;
        lttng_ust_tracepoint(stepcast_train, operation_end, "backward");

        lttng_ust_tracepoint(stepcast_train, operation_start, "optimizer_step");
        for (int j = 0; j < DIM; j++)
            w[j] -= lr * grad[j];
        lttng_ust_tracepoint(stepcast_train, operation_end, "optimizer_step");
        lttng_ust_tracepoint(stepcast_train, session_end, step);
        fprintf(stderr, "step %d loss %.4f\n", step, loss / BATCH);
    }
    atomic_store(&done, 1);
    pthread_join(load, NULL);
    pthread_join(spin, NULL);
    return 0;
}
