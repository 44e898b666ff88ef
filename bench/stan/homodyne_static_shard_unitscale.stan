// homodyne_static_shard_unitscale.stan -- the posterior of homodyne_static_shard.stan with
// every parameter on unit scale, as a Stan developer rescales a model: theta_i = m_i +
// s_i * z_i with z sampled unbounded, m the NLSQ estimate (the shard's mode) and s_i its
// NLSQ standard error (the Laplace covariance's marginal sd of theta_i), both data. The
// Jacobian is constant. The prior bounds are walls, as in the whitened model: rescaling a
// parameter declared with an interval bound would change nothing (Stan's logit of
// (x - lower) / (upper - lower) does not depend on the units of x), so the bounds move from
// the parameters to the transformed parameters.
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
  // reference point and unit scale, Stan's order (D0, alpha, D_offset, contrast, offset)
  int<lower=1> d;
  vector[d] ref_value;
  vector<lower=0>[d] ref_scale;
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
  real<lower=prior_D0[3], upper=prior_D0[4]> D0 = ref_value[1] + ref_scale[1] * z[1];
  real<lower=prior_alpha[3], upper=prior_alpha[4]> alpha = ref_value[2] + ref_scale[2] * z[2];
  real<lower=prior_D_offset[3], upper=prior_D_offset[4]> D_offset
      = ref_value[3] + ref_scale[3] * z[3];
  vector<lower=prior_contrast[3], upper=prior_contrast[4]>[n_phi] contrast
      = ref_value[4:(3 + n_phi)] + ref_scale[4:(3 + n_phi)] .* z[4:(3 + n_phi)];
  vector<lower=prior_offset[3], upper=prior_offset[4]>[n_phi] offset
      = ref_value[(4 + n_phi):d] + ref_scale[(4 + n_phi):d] .* z[(4 + n_phi):d];
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
}
