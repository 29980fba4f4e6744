"""The users routes: list the users with a model of their own, delete one user's model.

Deleting is an administrative call: it needs a bearer token, and while no API tokens are
configured it is refused (403) rather than open to every caller (``require_admin_token``).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path
from starlette.concurrency import run_in_threadpool

from app.api.dependencies import ServiceDep, require_admin_token, require_token
from app.api.schemas import STORAGE_ERRORS, DeletedUserResponse, UsersResponse, errors
from app.service.accounts import deleted_document, user_document

router = APIRouter()


@router.get(
    "/v1/users",
    tags=["users"],
    summary="Users with a model of their own",
    response_model=UsersResponse,
    responses=errors(401, *STORAGE_ERRORS),
    dependencies=[Depends(require_token)],
)
async def list_users(service: ServiceDep) -> UsersResponse:
    """Every user something was learned for, by name: learned messages per label and the
    vocabulary of their own model. Needs a bearer token when the server has API tokens
    configured."""
    users = await run_in_threadpool(service.users)
    return UsersResponse.model_validate({"users": [user_document(u) for u in users]})


@router.delete(
    "/v1/users/{user}",
    tags=["users"],
    summary="Delete a user's model",
    response_model=DeletedUserResponse,
    responses=errors(401, 403, 404, "invalid_user", *STORAGE_ERRORS),
    dependencies=[Depends(require_admin_token)],
)
async def delete_user(
    service: ServiceDep,
    user: str = Path(description="The user, as the other calls name them", examples=["alice"]),
) -> DeletedUserResponse:
    """Delete the user's own model: its token counts, label totals and learned-message
    records, in one transaction. The site-wide model is untouched, including what the user's
    feedback trained into it (``users.train_site``). 404 for a user without a model.

    Always needs a bearer token; refused (403) while no API tokens are configured."""
    deleted = await run_in_threadpool(service.delete_user, user)
    return DeletedUserResponse.model_validate(deleted_document(deleted))
