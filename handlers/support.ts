import { disputeCursorList } from '../src/domain/support/disputes';
import { reviewCursorList } from '../src/domain/support/reviews';
import { ticketCursorList } from '../src/domain/support/tickets';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listDisputes: OperationHandler<'listDisputes'> = listHandler(disputeCursorList, () => undefined);

export const listReviews: OperationHandler<'listReviews'> = listHandler(reviewCursorList, () => undefined);

export const listTickets: OperationHandler<'listTickets'> = listHandler(ticketCursorList, () => undefined);
