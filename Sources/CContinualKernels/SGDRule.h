// Plain SGD's update of one parameter (or one vector of them), p − lr·(g + wd·p), written once:
// ck_sgd_update (Updates.c) and the updates made inside the backward pass (GradientBody.h's
// sgd_span, WideTile.h's CK_EP_SGD epilogue) must round it the same way for their bits to agree.
// Their files contract nothing (`#pragma clang fp contract(off)`).
#ifndef CK_SGD_RULE_H
#define CK_SGD_RULE_H
#define CK_SGD_RULE(p, g, lr, wd) ((p) - (lr) * ((g) + (wd) * (p)))
#endif
