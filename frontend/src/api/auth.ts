// The signed-in user: who it is, signing in and out, the password and personal API tokens.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, unwrapEmpty } from "./http";
import { authKeys } from "./keys";
import type { Me } from "./types";

/** Who is signed in (a 401 ApiError when nobody is); read once, refreshed when teams or roles change. */
export function useMe() {
  return useQuery({
    queryKey: authKeys.me,
    queryFn: () => unwrap(api.GET("/api/v1/auth/me")),
    staleTime: Infinity,
  });
}

/** Signs in; on success every cached answer of a previous user is dropped and `me` is the new user. */
export function useSignIn() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { username: string; password: string }) => unwrap(api.POST("/api/v1/auth/login", { body })),
    onSuccess: (me: Me) => {
      client.removeQueries({ predicate: (q) => q.queryKey[0] !== authKeys.me[0] });
      client.setQueryData(authKeys.me, me);
    },
  });
}

export function useSignOut() {
  return useMutation({ mutationFn: () => unwrapEmpty(api.POST("/api/v1/auth/logout")) });
}

export function useChangePassword() {
  return useMutation({
    mutationFn: (body: { current_password: string; new_password: string }) =>
      unwrapEmpty(api.POST("/api/v1/auth/password", { body })),
  });
}

export function useTokens() {
  return useQuery({ queryKey: authKeys.tokens, queryFn: () => unwrap(api.GET("/api/v1/auth/tokens")) });
}

/** Creates a personal API token; its secret is in the mutation's data only (never cached, never re-read). */
export function useCreateToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string; expires_in_days: number | null }) =>
      unwrap(api.POST("/api/v1/auth/tokens", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.tokens }),
  });
}

export function useRevokeToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (tokenId: string) =>
      unwrapEmpty(api.DELETE("/api/v1/auth/tokens/{token_id}", { params: { path: { token_id: tokenId } } })),
    onSettled: () => client.invalidateQueries({ queryKey: authKeys.tokens }),
  });
}
