// homodyne_static_shard_whitened.stan -- the posterior of homodyne_static_shard.stan,
// sampled in the coordinates homodyne-hpc's CMC hands its NUTS: z with
//
//   u = centre + L * z                      (the shard's Laplace map, exported by
//                                            homodyne with HOMODYNE_CMC_MAP_DIR)
//   D0 = exp(u[i_D0]),  contrast_k = exp(u[i_c[k]]),  offset_k = u[i_o[k]] - contrast_k
//   alpha, D_offset = lo + (hi - lo) * inv_logit(u)   (within their prior bounds)
//
// (docs/cmc.md step 5b; src/cmc/sampling_geometry.h, bounded_transform.h). The model, the
// priors and the likelihood are those of homodyne_static_shard.stan, line for line; the
// target adds log|d theta / d u| (log D0 + sum log contrast_k + the logistic terms); the
// affine part's Jacobian, log|det L|, is a constant and omitted. The prior bounds are walls:
// the transformed parameters are declared with them, so a proposal outside is rejected.
data {
  int<lower=1> n_phi;
  int<lower=2> n_t;
  vector[n_t] t;
  real<lower=0> dt;
  real<lower=0> q;
  real<lower=0> sigma;
  int<lower=1> n_pairs;
  vector[n_pairs] c2[n_phi];
  vector[4] prior_D0;
  vector[4] prior_alpha;
  vector[4] prior_D_offset;
  vector[4] prior_contrast;
  vector[4] prior_offset;
  real<lower=0> prior_power;
  // the map: d = 3 + 2 n_phi coordinates in homodyne's order, indices into u
  int<lower=1> d;
  vector[d] centre;
  matrix[d, d] chol;                  // lower triangular
  int<lower=1, upper=d> i_D0;
  int<lower=1, upper=d> i_alpha;
  int<lower=1, upper=d> i_D_offset;
  int<lower=1, upper=d> i_c[n_phi];
  int<lower=1, upper=d> i_o[n_phi];
}
transformed data {
  vector[n_t] ts;
  real wq = 0.5 * q * q * dt;
  real log_g1_floor = log(1e-10);
  {
    real eps = fmax(0.5 * fabs(t[2] - t[1]), 1e-8);
    for (m in 1:n_t) ts[m] = t[m] > eps ? t[m] : eps;
  }
  if (d != 3 + 2 * n_phi) reject("d must be 3 + 2 n_phi, got ", d);
}
parameters {
  vector[d] z;
}
transformed parameters {
  real<lower=prior_D0[3], upper=prior_D0[4]> D0;
  real<lower=prior_alpha[3], upper=prior_alpha[4]> alpha;
  real<lower=prior_D_offset[3], upper=prior_D_offset[4]> D_offset;
  vector<lower=prior_contrast[3], upper=prior_contrast[4]>[n_phi] contrast;
  vector<lower=prior_offset[3], upper=prior_offset[4]>[n_phi] offset;
  real log_jacobian;
  {
    vector[d] u = centre + chol * z;
    D0 = exp(u[i_D0]);
    alpha = prior_alpha[3] + (prior_alpha[4] - prior_alpha[3]) * inv_logit(u[i_alpha]);
    D_offset = prior_D_offset[3]
               + (prior_D_offset[4] - prior_D_offset[3]) * inv_logit(u[i_D_offset]);
    for (k in 1:n_phi) {
      contrast[k] = exp(u[i_c[k]]);
      offset[k] = u[i_o[k]] - contrast[k];
    }
    log_jacobian = u[i_D0] + sum(u[i_c])
                   + log_inv_logit(u[i_alpha]) + log1m_inv_logit(u[i_alpha])
                   + log_inv_logit(u[i_D_offset]) + log1m_inv_logit(u[i_D_offset]);
  }
}
model {
  vector[n_pairs] g1sq;
  {
    vector[n_t] D;
    vector[n_t] C;
    int p = 1;
    for (m in 1:n_t) {
      D[m] = D0 * pow(ts[m], alpha) + D_offset;
      if (D[m] <= 1e-10) D[m] = 1e-10;
    }
    C[1] = 0;
    for (m in 2:n_t) C[m] = C[m - 1] + 0.5 * (D[m - 1] + D[m]);
    for (i in 1:(n_t - 1)) {
      real Ci = C[i];
      for (j in (i + 1):n_t) {
        real lg = -wq * hypot(Ci - C[j], 1e-6);
        g1sq[p] = lg > log_g1_floor ? exp(2 * lg) : 1e-20;
        p += 1;
      }
    }
  }
  {
    matrix[n_pairs, 1] X = to_matrix(g1sq);
    real sigma_v = sigma;
    for (k in 1:n_phi)
      target += normal_id_glm_lpdf(c2[k] | X, offset[k], contrast[k:k], sigma_v);
  }
  target += prior_power * (normal_lpdf(D0 | prior_D0[1], prior_D0[2])
                           + normal_lpdf(alpha | prior_alpha[1], prior_alpha[2])
                           + normal_lpdf(D_offset | prior_D_offset[1], prior_D_offset[2])
                           + normal_lpdf(contrast | prior_contrast[1], prior_contrast[2])
                           + normal_lpdf(offset | prior_offset[1], prior_offset[2]));
  target += log_jacobian;
}
