/* forward: batch validation and dispatch to the architecture's forward. */
#include "engine/forward.h"

#include "base/fpenv.h"

int fwd_n_out(const fwd_span *spans, int n_spans) {
    int n = 0;
    for (int s = 0; s < n_spans; s++) n += fwd_span_rows(&spans[s]);
    return n;
}

void fwd_bulk_rows(const fwd_span *spans, int n_spans, uint8_t *bulk, uint8_t *out_bulk) {
    for (int s = 0, t = 0, o = 0; s < n_spans; s++) {
        const uint8_t f = spans[s].n >= BULK_MIN_ROWS;
        for (int i = 0; i < spans[s].n; i++) bulk[t++] = f;
        if (out_bulk)
            for (int i = 0; i < fwd_span_rows(&spans[s]); i++) out_bulk[o++] = f && spans[s].out == FWD_OUT_ALL;
    }
}

int model_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden, err *e) {
    if (n_spans <= 0) return err_set(e, ERR_ARG, "empty batch");
    for (int s = 0; s < n_spans; s++) {
        const fwd_span *sp = &spans[s];
        if (sp->seq < 0 || sp->seq >= kv->n_seq)
            return err_set(e, ERR_ARG, "sequence %d out of range (the context has %d)", sp->seq, kv->n_seq);
        if (sp->n <= 0) return err_set(e, ERR_ARG, "span %d of sequence %d is empty", s, sp->seq);
        for (int q = 0; q < s; q++)
            if (spans[q].seq == sp->seq) return err_set(e, ERR_ARG, "sequence %d appears twice in one batch", sp->seq);
        int past = kv->seqs[sp->seq].n_past;
        if (past + sp->n > kv->n_ctx)
            return err_set(e, ERR_RANGE, "sequence %d: %d cached + %d new tokens exceed the context size %d", sp->seq,
                           past, sp->n, kv->n_ctx);
        for (int i = 0; i < sp->n; i++)
            if (sp->tokens[i] < 0 || sp->tokens[i] >= m->hp.n_vocab)
                return err_set(e, ERR_RANGE, "token id %d at position %d is outside the vocabulary (0..%d)",
                               sp->tokens[i], past + i, m->hp.n_vocab - 1);
    }
    const unsigned fp = fpenv_enter(); /* subnormals flushed (base/fpenv.h) */
    int rc;
    switch (m->arch) {
    case ARCH_QWEN35:
    case ARCH_QWEN35MOE: rc = qwen35_forward(m, kv, spans, n_spans, logits, hidden, e); break;
    case ARCH_LLAMA:
    case ARCH_QWEN2:
    case ARCH_QWEN3: rc = llama_forward(m, kv, spans, n_spans, logits, hidden, e); break;
    case ARCH_GEMMA3: rc = gemma3_forward(m, kv, spans, n_spans, logits, hidden, e); break;
    default: rc = err_set(e, ERR_UNSUPPORTED, "no forward for architecture %s", model_arch_name(m->arch));
    }
    fpenv_leave(fp);
    return rc;
}
