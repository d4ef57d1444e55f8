// Site admins: every user, creating one.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./http";
import { authKeys } from "./keys";

export function useUsers(enabled: boolean) {
  return useQuery({ queryKey: authKeys.users, queryFn: () => unwrap(api.GET("/api/v1/users")), enabled });
}

export function useCreateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { username: string; password: string | null; is_site_admin: boolean }) =>
      unwrap(api.POST("/api/v1/users", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.users }),
  });
}
