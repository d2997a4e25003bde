/* iquants: registers the IQ1/IQ2/IQ3, TQ, FP4 and Q1_0 families (one file each, see iquants.h). */
#include "quant/iquants.h"

void quant_register_iquants(quant_table t) {
    quant_register_iq1(t);
    quant_register_iq2(t);
    quant_register_iq3(t);
    quant_register_tq(t);
    quant_register_fp4(t);
    quant_register_q1_0(t);
}
